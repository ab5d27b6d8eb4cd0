"""The bundled document-QA example: reference set, offline arms, specs and judge files.

Package data; ``hr demo`` runs it (see ``hr_cli/demo.py``).
"""

__all__: list[str] = []
