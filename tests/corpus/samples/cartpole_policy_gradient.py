"""REINFORCE on a gym environment, CPU only: the policy is tiny and every action must be a
Python int for the environment, so reading tensors on the host costs nothing."""

import gymnasium as gym
import torch
import torch.nn as nn
from torch.distributions import Categorical

policy = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 2), nn.Softmax(dim=-1))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
env = gym.make("CartPole-v1")

for episode in range(1000):
    state, _ = env.reset()
    log_probs, rewards = [], []
    for t in range(500):
        probs = policy(torch.from_numpy(state).float())
        dist = Categorical(probs)
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        state, reward, done, truncated, _ = env.step(action.item())
        rewards.append(reward)
        if done or truncated:
            break
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    loss = -(torch.stack(log_probs) * (returns - returns.mean())).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"episode {episode}: reward {sum(rewards):.0f} loss {loss.item():.3f}")
