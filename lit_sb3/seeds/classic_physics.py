"""gymnasium's classic-control dynamics for many envs at once, float for float the per-env classes' results.

Each physics holds no env state: states are float64 arrays ``[state_size, n]`` (one column per env), actions an
array ``[n]`` (Discrete) or ``[n, 1]`` (Box). Exactness rests on three rules, checked against gymnasium's envs in
``tests/lit_sb3/seeds/test_classic_envs.py``:

* every elementwise operation keeps gymnasium's operand order and grouping (IEEE add / multiply / divide give the
  same result on an array as on a scalar); constants are folded only where gymnasium folds them too (a product of
  constants before the first variable);
* numpy's ``cos`` / ``sin`` on an array are its ufunc loop on a numpy scalar (what gymnasium calls); where gymnasium
  calls ``math.cos`` the value comes from ``math.cos`` per element;
* a numpy scalar's ``x ** 2`` is the C library's ``pow``, which differs from ``x * x`` in the last bit now and then:
  ``np.float_power`` computes the same ``pow`` on an array.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.utils import maybe_parse_reset_bounds


def _pow2(x: np.ndarray) -> np.ndarray:
    """``x ** 2`` as a numpy float64 scalar computes it (C ``pow``), per element."""
    return np.float_power(x, 2.0)


def _wrap(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """Shift angles into [low, high] by whole turns, one turn at a time, as gymnasium's Acrobot does."""
    turn = high - low
    above = x > high
    while above.any():
        x = np.where(above, x - turn, x)
        above = x > high
    below = x < low
    while below.any():
        x = np.where(below, x + turn, x)
        below = x < low
    return x


def _bound(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """Python's ``min(max(x, low), high)`` per element (the bound wins only when strictly past it)."""
    x = np.where(low > x, low, x)
    return np.where(high < x, high, x)


class Physics:
    """One classic-control env family's dynamics (gymnasium's default arguments)."""

    #: the gymnasium id and the entry point whose dynamics these are
    env_id: ClassVar[str]
    entry_point: ClassVar[str]
    state_size: ClassVar[int]
    #: 'discrete': actions ``[n]`` of ints; 'box': ``[n, 1]`` floats
    action_kind: ClassVar[str] = "discrete"

    def valid(self, actions: np.ndarray, space: spaces.Space) -> np.ndarray:
        """Which of ``actions`` the env takes (its Discrete space's values)."""
        assert isinstance(space, spaces.Discrete)
        return (actions >= space.start) & (actions < space.start + space.n)

    def reset(self, rng: np.random.Generator, options: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        """One env's initial state (float64 ``[state_size]``) and observation, drawing from ``rng`` as the env's
        ``reset`` does."""
        raise NotImplementedError

    def step(self, state: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """New states, observations ``[n, obs_size]`` (float32), rewards (float64) and terminations."""
        raise NotImplementedError


class CartPolePhysics(Physics):
    env_id = "CartPole-v1"
    entry_point = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"
    state_size = 4

    gravity = 9.8
    masspole = 0.1
    total_mass = masspole + 1.0
    half_length = 0.5
    polemass_length = masspole * half_length
    force_mag = 10.0
    tau = 0.02
    theta_limit = 12 * 2 * math.pi / 360
    x_limit = 2.4

    def reset(self, rng: np.random.Generator, options: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        low, high = maybe_parse_reset_bounds(options, -0.05, 0.05)
        state = rng.uniform(low=low, high=high, size=(4,))
        return state, state.astype(np.float32)

    def step(self, state: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        x, x_dot, theta, theta_dot = state
        force = np.where(actions == 1, self.force_mag, -self.force_mag)
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * np.square(theta_dot) * sin) / self.total_mass
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.masspole * np.square(cos) / self.total_mass)
        )
        x_acc = temp - self.polemass_length * theta_acc * cos / self.total_mass
        new = np.stack(
            [
                x + self.tau * x_dot,
                x_dot + self.tau * x_acc,
                theta + self.tau * theta_dot,
                theta_dot + self.tau * theta_acc,
            ]
        )
        x, theta = new[0], new[2]
        terminated = (x < -self.x_limit) | (x > self.x_limit) | (theta < -self.theta_limit) | (theta > self.theta_limit)
        return new, new.T.astype(np.float32), np.ones(len(x)), terminated


class AcrobotPhysics(Physics):
    """The 'book' dynamics, integrated over one 0.2 s step with one classical Runge-Kutta step."""

    env_id = "Acrobot-v1"
    entry_point = "gymnasium.envs.classic_control.acrobot:AcrobotEnv"
    state_size = 4

    dt = 0.2
    torques = np.array([-1.0, 0.0, 1.0])
    max_vel_1 = 4 * np.pi
    max_vel_2 = 9 * np.pi
    # Both links: length 1, mass 1, centre of mass at 0.5, moment of inertia 1. Products of constants grouped as
    # gymnasium's expressions group them (left to right, before the first variable).
    m2 = 1.0
    inertia = 1.0
    d1_const = 1.0 * 0.5**2
    d1_inner = 1.0**2 + 0.5**2
    d1_cos = 2 * 1.0 * 0.5
    d2_const = 0.5**2
    d2_cos = 1.0 * 0.5
    phi2_k = 1.0 * 0.5 * 9.8
    phi1_sq = -1.0 * 1.0 * 0.5
    phi1_cross = 2 * 1.0 * 1.0 * 0.5
    phi1_grav = (1.0 * 0.5 + 1.0 * 1.0) * 9.8
    book_k = 1.0 * 1.0 * 0.5
    denom_const = 1.0 * 0.5**2 + 1.0

    def reset(self, rng: np.random.Generator, options: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        low, high = maybe_parse_reset_bounds(options, -0.1, 0.1)
        start = rng.uniform(low=low, high=high, size=(4,)).astype(np.float32)
        # the first observation's cos / sin are float32's (the state is float32 until the first step)
        angles = start[:2]
        obs = np.array([np.cos(angles[0]), np.sin(angles[0]), np.cos(angles[1]), np.sin(angles[1]), start[2], start[3]])
        return start.astype(np.float64), obs.astype(np.float32)

    def _derivatives(self, y: np.ndarray) -> np.ndarray:
        theta1, theta2, dtheta1, dtheta2, torque = y
        cos2, sin2 = np.cos(theta2), np.sin(theta2)
        d1 = self.d1_const + self.m2 * (self.d1_inner + self.d1_cos * cos2) + self.inertia + self.inertia
        d2 = self.m2 * (self.d2_const + self.d2_cos * cos2) + self.inertia
        phi2 = self.phi2_k * np.cos(theta1 + theta2 - np.pi / 2.0)
        phi1 = (
            self.phi1_sq * _pow2(dtheta2) * sin2
            - self.phi1_cross * dtheta2 * dtheta1 * sin2
            + self.phi1_grav * np.cos(theta1 - np.pi / 2)
            + phi2
        )
        ddtheta2 = (torque + d2 / d1 * phi1 - self.book_k * _pow2(dtheta1) * sin2 - phi2) / (
            self.denom_const - _pow2(d2) / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return np.stack([dtheta1, dtheta2, ddtheta1, ddtheta2, np.zeros_like(theta1)])

    def step(self, state: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        y0 = np.concatenate([state, self.torques[actions][None]])
        half = self.dt / 2.0
        k1 = self._derivatives(y0)
        k2 = self._derivatives(y0 + half * k1)
        k3 = self._derivatives(y0 + half * k2)
        k4 = self._derivatives(y0 + self.dt * k3)
        new = (y0 + self.dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))[:4]
        new[0] = _wrap(new[0], -np.pi, np.pi)
        new[1] = _wrap(new[1], -np.pi, np.pi)
        new[2] = _bound(new[2], -self.max_vel_1, self.max_vel_1)
        new[3] = _bound(new[3], -self.max_vel_2, self.max_vel_2)
        theta1, theta2 = new[0], new[1]
        cos1, sin1, cos2, sin2 = np.cos(theta1), np.sin(theta1), np.cos(theta2), np.sin(theta2)
        terminated = -cos1 - np.cos(theta2 + theta1) > 1.0
        obs = np.stack([cos1, sin1, cos2, sin2, new[2], new[3]], axis=1).astype(np.float32)
        return new, obs, np.where(terminated, 0.0, -1.0), terminated


class MountainCarPhysics(Physics):
    env_id = "MountainCar-v0"
    entry_point = "gymnasium.envs.classic_control.mountain_car:MountainCarEnv"
    state_size = 2

    min_position, max_position = -1.2, 0.6
    max_speed = 0.07
    goal_position = 0.5
    force = 0.001
    gravity = 0.0025

    def reset(self, rng: np.random.Generator, options: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        low, high = maybe_parse_reset_bounds(options, -0.6, -0.4)
        state = np.array([rng.uniform(low=low, high=high), 0.0])
        return state, state.astype(np.float32)

    def step(self, state: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        position, velocity = state
        slope = np.array([math.cos(p) for p in (3 * position).tolist()])  # gymnasium calls math.cos
        velocity = velocity + ((actions - 1) * self.force + slope * (-self.gravity))
        velocity = np.clip(velocity, -self.max_speed, self.max_speed)
        position = np.clip(position + velocity, self.min_position, self.max_position)
        velocity = np.where((position == self.min_position) & (velocity < 0), 0.0, velocity)
        terminated = (position >= self.goal_position) & (velocity >= 0)
        new = np.stack([position, velocity])
        return new, new.T.astype(np.float32), np.full(len(position), -1.0), terminated


#: env id -> its batched physics
PHYSICS: dict[str, type[Physics]] = {p.env_id: p for p in (CartPolePhysics, AcrobotPhysics, MountainCarPhysics)}
