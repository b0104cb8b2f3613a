def nothing_here():
    return 42
