# SPDX-License-Identifier: Apache-2.0
# groups: one module per API group served; importing one registers its
# resources (machinery/registry.py).  Discovery lists them in this order.

from . import core  # noqa: F401
from . import coordination  # noqa: F401
from . import authentication  # noqa: F401
from . import authorization  # noqa: F401
from . import metrics  # noqa: F401
from . import kubeletproxy  # noqa: F401  (pods/log, nodes/proxy: after core)
from . import apps  # noqa: F401
from . import batch  # noqa: F401
from . import certificates  # noqa: F401
