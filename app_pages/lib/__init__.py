"""What the pages share (session scenario and caches, uploads, worker processes, safe text); not pages themselves.

The page scripts are the modules of ``app_pages/`` that ``app.py`` lists; everything here is imported by them.
"""
