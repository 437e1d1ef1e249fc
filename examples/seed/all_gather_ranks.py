# Seed 003, first example, unchanged except `import tutti.torch` and backend='tutti'.
# Run: PYTHONPATH=bindings/python build/bin/tutti-run -n 4 /usr/bin/python3 examples/seed/all_gather_ranks.py
import torch
import torch.distributed as dist
import tutti.torch

# Инициализация распределенной среды (обычно выполняется при запуске)
dist.init_process_group(backend='tutti')
rank = dist.get_rank()
world_size = dist.get_world_size()

# Тензор для отправки (содержит ранг процесса)
t = torch.tensor([rank], dtype=torch.int64)

# Список для приема данных от всех процессов
tensor_list = [torch.zeros(1, dtype=torch.int64) for _ in range(world_size)]

# Сбор данных со всех процессов
dist.all_gather(tensor_list, t)

if rank == 0:
	print(tensor_list)

dist.destroy_process_group()
