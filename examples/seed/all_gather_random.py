# Seed 003, second example, unchanged except `import tutti.torch` and backend='tutti'.
# Run: PYTHONPATH=bindings/python build/bin/tutti-run -n 4 /usr/bin/python3 examples/seed/all_gather_random.py
import torch
import torch.distributed as dist
import tutti.torch

torch.manual_seed(42)
dist.init_process_group(backend='tutti')
rank = dist.get_rank()
world_size = dist.get_world_size()

# Каждый процесс создает свой тензор
t = torch.randn(2, 3) + rank

# Подготовка списка для приема
tensor_list = [torch.zeros_like(t) for _ in range(world_size)]

# Сбор всех тензоров
dist.all_gather(tensor_list, t)

if rank == 0:
	for i, tensor in enumerate(tensor_list):
		print(f"Тензор от процесса {i}:")
		print(tensor)

dist.destroy_process_group()
