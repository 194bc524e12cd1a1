"""Runtime code bundled into the serving image: gateways, model gateway, batch workers, engine simulator."""
