"""The production WSGI entry point: `gunicorn -k gevent wsgi:app`."""

from service.patch import patch

patch()

from service.app import create_app  # noqa: E402
from service.logs import configure  # noqa: E402
from service.settings import Settings  # noqa: E402

settings = Settings.load()
configure(settings.log_level)
app = create_app(settings)
