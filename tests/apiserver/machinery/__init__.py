# SPDX-License-Identifier: Apache-2.0
# machinery: what the local API server's group modules (groups/) share.
