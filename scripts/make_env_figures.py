"""Write the README's environment figures from one finished teaching episode.

    .venv/bin/python scripts/make_env_figures.py [--out docs/img]

writes ``teaching_render.txt`` (the ``render_mode="ansi"`` text mid-episode and at the
end) and ``teaching_gantt.png`` (the ``render_mode="rgb_array"`` Gantt chart of the
finished episode). The policy is "shortest predicted remaining time first", read from the
observation, in ``priority`` mode: deterministic, so the files only change when the
environment does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION, feature_names

ENV_ID = "shockwave_gym/Teaching-v0"
SNAPSHOT_ROUND = 6
_REMAINING = feature_names(DEFAULT_OBSERVATION_VERSION)[0].index("predicted_remaining")


def shortest_predicted_first(obs: dict) -> np.ndarray:
    """Priority scores: higher for a smaller predicted remaining time."""
    return (1.0 - obs["jobs"][:, _REMAINING] / 4.0).astype(np.float32)


def play(render_mode: str) -> tuple[list, dict]:
    """Run the episode; return the renders taken (after SNAPSHOT_ROUND and at the end)."""
    env = gym.make(ENV_ID, action_mode="priority", render_mode=render_mode)
    obs, _ = env.reset(seed=0)
    frames = []
    while True:
        obs, _, terminated, truncated, info = env.step(shortest_predicted_first(obs))
        if info["round_index"] == SNAPSHOT_ROUND:
            frames.append(env.render())
        if terminated or truncated:
            frames.append(env.render())
            env.close()
            return frames, info["metrics"]


def render_text() -> str:
    (middle, final), _ = play("ansi")
    return (
        f"# {ENV_ID}, priority mode, shortest predicted remaining time first\n"
        f"# after round {SNAPSHOT_ROUND}:\n{middle}\n# finished episode:\n{final}"
    )


def write_figures(out_dir: Path) -> tuple[Path, Path]:
    import matplotlib.image

    out_dir.mkdir(parents=True, exist_ok=True)
    text_path = out_dir / "teaching_render.txt"
    text_path.write_text(render_text(), encoding="utf-8")
    (_, gantt), _ = play("rgb_array")
    png_path = out_dir / "teaching_gantt.png"
    matplotlib.image.imsave(png_path, gantt, metadata={"Software": None})
    return text_path, png_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "img")
    args = parser.parse_args()
    for path in write_figures(args.out):
        print(path)


if __name__ == "__main__":
    main()
