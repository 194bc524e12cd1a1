"""The command line and its views: ``tokenplane`` and what each command prints.

cli declares the commands and imports everything else lazily, so that
``plan --capacity-only`` never pays for pulumi; the *_report modules turn plans, renders
and checks into tables, JSON, JUnit and SARIF. May import anything in the core; nothing in
the core imports it.
"""
