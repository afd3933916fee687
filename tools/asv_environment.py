"""asv plugin (asv.conf.json "plugins"): the project's "existing" environment under a name that
holds the Python version only, "existing-py3.12", where asv's own puts the interpreter's path
in it ("existing-py_work_main_.venv_bin_python"): every checkout and every GPU node then started a
series of its own. With a fixed machine name (`make asv` passes the GPU's model), results of one
machine and Python land in one history whatever the checkout.

Use: `asv run -E project:same` (the interpreter running asv) or `-E project:/path/to/python`.
"""
import os
import sys

from asv import util
from asv.environment import EnvironmentUnavailable, ExistingEnvironment, get_env_name


class ProjectEnvironment(ExistingEnvironment):
    tool_name = "project"

    def __init__(self, conf, executable, requirements, tagged_env_vars):
        try:  # the version first: the base class asks for the name while it sets up
            exe = os.path.abspath(util.which(sys.executable if executable == "same" else executable))
            self._version = util.check_output([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).strip()
        except (util.ProcessError, OSError):
            raise EnvironmentUnavailable() from None
        super().__init__(conf, executable, requirements, tagged_env_vars)

    @property
    def name(self) -> str:
        return get_env_name("existing", self._version, {}, self._tagged_env_vars)
