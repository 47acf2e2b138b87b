"""mcuprof.symbols"""
