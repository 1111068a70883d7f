"""Qt-free core: protocol, gateway client, connection supervision, delivery and local storage."""
