"""The production WSGI entry point: `gunicorn -k gevent wsgi:app`."""

from service.patch import patch

patch()

from service.runtime.heap import freeze_startup_objects  # noqa: E402
from service.runtime.logs import configure  # noqa: E402
from service.runtime.settings import Settings  # noqa: E402
from service.web.app import create_app  # noqa: E402

settings = Settings.load()
configure(settings.log_level)
app = create_app(settings)
freeze_startup_objects()
