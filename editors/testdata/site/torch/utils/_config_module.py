def install_config_module(module):
    """Turns a module's plain assignments into config entries (no-op here)."""
    return module
