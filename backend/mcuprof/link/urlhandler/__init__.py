"""pyserial URL handlers: ``serial.protocol_handler_packages`` lists this package,
so ``serial_for_url("sim://...")`` finds ``protocol_sim``."""
