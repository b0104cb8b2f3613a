# An exception in a DataLoader worker process, re-raised in the main process.
import torch
from torch.utils.data import DataLoader, Dataset

class Shapes(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise ValueError(f"sample {i} is broken")
        return torch.ones(3)

if __name__ == "__main__":
    for batch in DataLoader(Shapes(), batch_size=2, num_workers=1):
        pass
