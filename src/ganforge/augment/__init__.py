"""What every image the discriminator sees goes through: ADA's pipeline and its controller (Karras et al. 2020),
DiffAugment (Zhao et al. 2020), and StyleGAN3-R's blur (Karras et al. 2021, App. D)."""

from ganforge.augment.blur import blur_images
from ganforge.augment.diffaugment import DiffAugment
from ganforge.augment.pipe import PRESETS, AdaptiveAugment, AugmentPipe

__all__ = ["PRESETS", "AdaptiveAugment", "AugmentPipe", "DiffAugment", "blur_images"]
