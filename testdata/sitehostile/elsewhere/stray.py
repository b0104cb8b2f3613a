# A module on sys.path (through a .pth file) that no distribution installs.
STRAY = 1
