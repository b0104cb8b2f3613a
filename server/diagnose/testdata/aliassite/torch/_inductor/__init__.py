"""Compiler backend of the alias fixture."""
