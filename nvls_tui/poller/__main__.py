"""``python -m nvls_tui.poller READ_FD WRITE_FD PARENT_PID``: the poller process (nvls_tui.poller.process).

Through the module's own name, not ``__main__``'s: the spec it reads unpickles as
``nvls_tui.poller.process.PollerSpec``.
"""

import sys

from nvls_tui.poller.process import main

sys.exit(main())
