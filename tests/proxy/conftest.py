"""The tests of the recording proxy: `rig_of` starts one in front of a stand-in upstream (support.proxy_rig)."""

from support.proxy_rig import rig_of  # noqa: F401 - the fixture, shared with the browser test
