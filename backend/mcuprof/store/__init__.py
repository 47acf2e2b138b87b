"""mcuprof.store"""
