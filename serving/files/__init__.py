"""Batch API storage: tenants' files (a directory or S3) and batch records (Redis).

Imports the core (``tokenplane``) and ``serving`` shared modules only; never a process package.
"""
