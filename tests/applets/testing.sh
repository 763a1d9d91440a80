# the harness moved to tests/lib/testing.sh (sourced from here by older suites)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/testing.sh"
