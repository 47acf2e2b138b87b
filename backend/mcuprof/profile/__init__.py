"""mcuprof.profile"""
