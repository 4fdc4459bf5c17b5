"""R3GAN (Huang et al. 2024, "The GAN is dead; long live the GAN!"): its generator, discriminator, relativistic loss
with R1 and R2, and annealed schedules."""
