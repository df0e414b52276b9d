#include "core/skinning/lbs.h"
