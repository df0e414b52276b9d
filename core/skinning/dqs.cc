#include "core/skinning/dqs.h"
