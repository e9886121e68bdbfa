"""Who does the thinking inside the components: the seams, the offline learner and the model."""
