# Mentions install_config_module(sys.modules[__name__]) only in a comment:
# not a config module.
x = 1
