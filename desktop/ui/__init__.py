"""PySide6 widgets and models. Receives core objects from the composition root; opens no sockets."""
