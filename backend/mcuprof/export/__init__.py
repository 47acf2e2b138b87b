"""mcuprof.export"""
