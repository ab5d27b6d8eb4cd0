"""The Prefect server hr starts (``hr server``) and the process set-up around Prefect: its
quiet defaults, importing it with the garbage collector paused, ports, the private server's
files and secret, its database and health. Used by hr_cli and flows; imports hr_core only
(never flows, tasks or hr_cli).
"""
