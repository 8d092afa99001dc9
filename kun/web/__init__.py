"""The browser view of ``kun serve``: static HTML, CSS and JavaScript in
``static/``, shipped as package data and served by :mod:`kun.server.web`.
No build step and nothing fetched from another host, so it works offline."""
