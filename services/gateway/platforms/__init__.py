"""Platform adapters, one module each; `services.gateway.registry.register` lists them."""
