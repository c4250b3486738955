"""Shared fixtures live in their own modules; this file only gathers them."""

from tests.fixtures_http import *  # noqa: F403
from tests.fixtures_redis import *  # noqa: F403
