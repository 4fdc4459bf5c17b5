"""StyleGAN2 (Karras et al. 2020, "Analyzing and Improving the Image Quality of StyleGAN"), as trained by ADA's
code: its networks' layouts and self-attention, progressive growing, non-square images."""
