#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# slave.py - a Modbus RTU slave (Debian's python3-pymodbus) on a serial port, for e2e_pass.
#
#   /usr/bin/python3 slave.py PORT BAUD
#
# Unit 1 serves holding registers 0..99 holding 1000 + their address (writes are
# kept). Run it with Debian's /usr/bin/python3: a python3 earlier on PATH may not
# see Debian's modules. pymodbus's serial server also needs python3-serial-asyncio.
import logging
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartSerialServer
from pymodbus.transaction import ModbusRtuFramer

logging.basicConfig(level=logging.WARNING)
port, baud = sys.argv[1], int(sys.argv[2])
registers = ModbusSequentialDataBlock(0, [1000 + a for a in range(100)])
unit = ModbusSlaveContext(hr=registers, zero_mode=True)
StartSerialServer(context=ModbusServerContext(slaves={1: unit}, single=False),
                  framer=ModbusRtuFramer, port=port, baudrate=baud, bytesize=8, parity="N",
                  stopbits=1)
