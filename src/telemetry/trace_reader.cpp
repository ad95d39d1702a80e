#include "telemetry/trace.hpp"
