"""What assembles the resources and serves them: the app and its lifespan, the one list of
resources, the middleware, the server and its protocol, the metrics listener."""
