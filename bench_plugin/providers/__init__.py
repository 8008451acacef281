"""Providers: one wire format (or offline source of answers) each, behind one interface."""
