"""One profile as the UI sees it: its settings and token storage, the controller behind the window's
`ChatBackend`, and the parts the controller is made of.
"""
