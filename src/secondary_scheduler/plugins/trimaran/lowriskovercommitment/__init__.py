"""LowRiskOverCommitment: favour nodes where overcommitted limits carry the least risk."""
