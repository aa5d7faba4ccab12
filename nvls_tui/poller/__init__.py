"""The console's poller process, an entry point of its own (``python -m nvls_tui.poller``): it polls the
nodes off the console's event loop and answers the console (and ``check --watch``) over a pipe."""
