"""StyleGAN3 (Karras et al. 2021, "Alias-Free Generative Adversarial Networks"): the alias-free generator, configs
T and R, trained with StyleGAN2's discriminator and loss."""
