"""The AG-UI front-end: app, projection, history, page, replicas."""
