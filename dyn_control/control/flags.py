"""The entries of a compiled tick's scalar field `s` (tick.py, closed_chain_tick.py), in one place so
that every piece of the tick (safety.py, collision.py, cartesian_impedance.py, ...) reads the same
indices. Inputs are set by the caller (the node) before a tick; state and outputs are kept by the
tick."""

__all__ = [
    "S_T", "S_OMEGA", "S_DT", "S_POINT", "S_NEW_SAMPLE", "S_RESET", "S_HAS_EFFORT", "S_SAFE", "S_SAFE_ZERO",
    "S_COMPENSATION", "S_GRAVITY_BY_ROBOT", "S_ESTIMATE", "S_GRADIENTS", "S_TWIST", "S_WANT_WRENCH",
    "S_WANT_GRADIENT", "S_WANT_TWIST", "S_WRENCH_DAMPING", "S_CUTOFF_HZ", "S_BRAKE", "S_ANCHOR", "S_BLEND_TIME",
    "S_BLEND_SPEED", "S_ERROR_LIMIT",
    "S_NON_FINITE", "S_ERROR_SQ", "S_ERROR_COUNT", "S_ESTIMATOR_RESETS", "S_COUNT", "S_NEXT", "S_WRENCH_OK",
    "S_FILTER_STARTED", "S_BLEND_START", "S_BLEND_SPAN", "S_BLENDING", "S_ANCHORS", "S_ERROR_ANCHORS",
    "S_RATE_LIMITED",
    "S_MODE", "S_TARGET_ALPHA", "S_TARGET_SET", "S_DAMPING_RATIO", "S_SINGULAR_DAMPING", "S_COLLISION_ON",
    "S_REACTION", "S_COLLISION_ACCEL_GAIN", "S_REFLEX_DISTANCE", "S_REFLEX_DURATION",
    "S_POSE_OK", "S_COLLISION_LEVEL", "S_COLLIDED", "S_COLLISION_JOINT", "S_COLLISION_TIME", "S_CONTACTS",
    "S_COLLISIONS", "S_DETECT_FROM", "S_BRAKE_SPEED", "S_BRAKING_FIRST", "S_BRAKINGS_FIRST",
    "S_EFFORT_MEASURED", "S_STOP_TIME", "NS", "JOINT_MODE", "CARTESIAN_MODE",
]

(
    # inputs: the time [s], the sine's angular frequency, the stamp difference [s]; the reference is
    # the caller's point (trajectories), a new sample arrived, the estimators restart, the sample
    # carries measured efforts; safe mode (stale joint states), holding zero rather than g(q);
    # subtract the estimated external torque; the robot compensates gravity itself; run the
    # estimators, the gradient windows, the joint-twist gradient; compute the wrench, the gradients,
    # the twist gradient this tick; the wrench's damping; the acceleration filter's cutoff [Hz];
    # brake (deactivate with fresh states); re-anchor the reference; the re-engagement blend's
    # shortest duration [s] and largest speed [rad/s]; the tracking error that re-anchors [rad]
    S_T, S_OMEGA, S_DT, S_POINT, S_NEW_SAMPLE, S_RESET, S_HAS_EFFORT, S_SAFE, S_SAFE_ZERO,
    S_COMPENSATION, S_GRAVITY_BY_ROBOT, S_ESTIMATE, S_GRADIENTS, S_TWIST, S_WANT_WRENCH,
    S_WANT_GRADIENT, S_WANT_TWIST, S_WRENCH_DAMPING, S_CUTOFF_HZ, S_BRAKE, S_ANCHOR, S_BLEND_TIME,
    S_BLEND_SPEED, S_ERROR_LIMIT,
    # state and outputs: non-finite results replaced, the tracking error's sum of squares and count,
    # estimator restarts, the gradient window's fill and next slot, the wrench is valid, the
    # acceleration filter has a sample, the blend's start, duration and whether it runs, anchors
    # (all, and those for a tracking error), commands changed by the rate limit
    S_NON_FINITE, S_ERROR_SQ, S_ERROR_COUNT, S_ESTIMATOR_RESETS, S_COUNT, S_NEXT, S_WRENCH_OK,
    S_FILTER_STARTED, S_BLEND_START, S_BLEND_SPAN, S_BLENDING, S_ANCHORS, S_ERROR_ANCHORS, S_RATE_LIMITED,
    # inputs of the control laws (cartesian_impedance.py, collision.py): the control law (JOINT_MODE,
    # CARTESIAN_MODE); the equilibrium's filter fraction per tick; a target was given (else the
    # target is the pose at the last anchor); the impedance's damping ratio; the damping of the
    # operational-space inertia near singularities; collision detection on; the reaction
    # (collision.REPORT, STOP, FLOAT, REFLEX); the thresholds' growth with |a_r|; the reflex's
    # retreat [rad] and duration [s]
    S_MODE, S_TARGET_ALPHA, S_TARGET_SET, S_DAMPING_RATIO, S_SINGULAR_DAMPING, S_COLLISION_ON,
    S_REACTION, S_COLLISION_ACCEL_GAIN, S_REFLEX_DISTANCE, S_REFLEX_DURATION,
    # ... their state and outputs: the impedance torque was computed; the residual's level
    # (collision.NONE, CONTACT, COLLISION); a collision is latched (reacting until reset); the joint
    # it was isolated to and its time; contacts and collisions counted; the time detection starts
    # (after the observer's restart has settled)
    S_POSE_OK, S_COLLISION_LEVEL, S_COLLIDED, S_COLLISION_JOINT, S_COLLISION_TIME, S_CONTACTS,
    S_COLLISIONS, S_DETECT_FROM,
    # re-engagement (safety.py): the speed [rad/s] above which an anchor waits while the arm brakes
    # (input); braking before an anchor now (state); such brakings counted (output)
    S_BRAKE_SPEED, S_BRAKING_FIRST, S_BRAKINGS_FIRST,
    # the applied torque the observer took at the last sample: the measured efforts (1) or the last
    # command (0) (state: momentum_observer.efforts_measured; a change restarts the observer)
    S_EFFORT_MEASURED,
    # the time [s] in which stop and reflex bring the joints from their speed at the collision to rest
    # (input; collision.reaction_reference)
    S_STOP_TIME,
    NS) = range(62)

JOINT_MODE, CARTESIAN_MODE = 0.0, 1.0     # values of s[S_MODE]
