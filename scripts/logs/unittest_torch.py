# unittest's report of a failing test that calls into torch.
import unittest
import torch

class ShapeTest(unittest.TestCase):
    def test_linear(self):
        torch.nn.Linear(4, 2)(torch.randn(2, 3))

if __name__ == "__main__":
    unittest.main()
