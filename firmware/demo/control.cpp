/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
#include "demo.h"

namespace app {

template <typename T>
NOINLINE T clamp(T value, T lo, T hi)
{
    return value < lo ? lo : (value > hi ? hi : value);
}

class Pid {
public:
    Pid(int32_t kp, int32_t ki) : kp_(kp), ki_(ki), integral_(0) {}
    NOINLINE int32_t step(int32_t error);

private:
    int32_t kp_;
    int32_t ki_;
    int32_t integral_;
};

int32_t Pid::step(int32_t error)
{
    // Anti-windup: the integral is clamped as well as the output.
    integral_ = clamp<int>(integral_ + error, -4000, 4000);
    return clamp<int>((kp_ * error + ki_ * integral_) / 16, -1000, 1000);
}

}  // namespace app

extern "C" int32_t control_step(int32_t setpoint, int32_t measured)
{
    // Function-local static without a guard (-fno-threadsafe-statics): no libstdc++.
    static app::Pid pid(12, 3);
    return pid.step(setpoint - measured);
}
