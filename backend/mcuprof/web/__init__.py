"""mcuprof.web"""
