"""A torch-shaped tree for opimpl's tests: the spellings torch uses to
register ops for the compiler stack, each line that registers marked with
what the scanner must find there ("want:"), and the first lines of
registered functions defined elsewhere named ("anchor:")."""
