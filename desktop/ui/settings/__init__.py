"""The settings dialog: profiles, providers, preferences and the form pieces its pages share."""
