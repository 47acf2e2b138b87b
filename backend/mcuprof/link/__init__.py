"""mcuprof.link"""
